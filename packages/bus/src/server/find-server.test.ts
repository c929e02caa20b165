import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Env, ErrorCode, isMeshError } from "@mesh/protocol";
import {
  compareVersions,
  findServer,
  parseServerVersion,
  supportsSyncInterval,
} from "./find-server.js";

describe("parseServerVersion", () => {
  const cases: { text: string; want: string | undefined }[] = [
    { text: "nats-server: v2.9.10\n", want: "2.9.10" },
    { text: "nats-server: v2.11.0-RC.1", want: "2.11.0" },
    { text: "2.10.24", want: "2.10.24" },
    { text: "nats-server: dev", want: undefined },
    { text: "", want: undefined },
  ];
  for (const { text, want } of cases) {
    it(`reads ${JSON.stringify(text)}`, () => assert.equal(parseServerVersion(text), want));
  }
});

describe("compareVersions and supportsSyncInterval", () => {
  it("orders versions by number, not by text", () => {
    assert.ok(compareVersions("2.9.10", "2.9.9") > 0);
    assert.ok(compareVersions("2.10.0", "2.9.10") > 0);
    assert.ok(compareVersions("2.8.4", "2.9.0") < 0);
    assert.equal(compareVersions("2.9.0", "2.9.0"), 0);
  });
  it("knows sync_interval from 2.10.0", () => {
    assert.equal(supportsSyncInterval("2.9.10"), false);
    assert.equal(supportsSyncInterval("2.10.0"), true);
  });
});

describe("findServer", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "mesh-find-server-"));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A stand-in binary that prints `output` for --version. */
  async function fakeServer(name: string, output: string): Promise<string> {
    const folder = join(dir, name);
    const path = join(folder, "nats-server");
    await rm(folder, { recursive: true, force: true });
    await mkdir(folder);
    await writeFile(path, `#!/bin/sh\necho '${output}'\n`);
    await chmod(path, 0o755);
    return path;
  }

  it("finds the installed server and its version", async () => {
    const found = await findServer({ env: { PATH: "" } });
    assert.equal(found.path, "/usr/sbin/nats-server");
    assert.match(found.version, /^\d+\.\d+\.\d+$/);
    assert.ok(compareVersions(found.version, "2.9.0") >= 0);
  });

  it(`prefers ${Env.natsServer}, then PATH, then the fallback folders`, async () => {
    const viaEnv = await fakeServer("env", "nats-server: v2.12.1");
    const viaPath = await fakeServer("path", "nats-server: v2.11.3");
    assert.deepEqual(
      await findServer({ env: { [Env.natsServer]: viaEnv, PATH: join(dir, "path") } }),
      {
        path: viaEnv,
        version: "2.12.1",
      },
    );
    assert.deepEqual(await findServer({ env: { PATH: `relative:${join(dir, "path")}` } }), {
      path: viaPath,
      version: "2.11.3",
    });
  });

  it("gives SERVER_NOT_FOUND, saying how to install it, when there is none", async () => {
    await assert.rejects(
      findServer({ env: { PATH: join(dir, "empty") }, dirs: [] }),
      (error: unknown) => {
        assert.ok(isMeshError(error, ErrorCode.SERVER_NOT_FOUND));
        assert.match(error.message, /apt-get install -y nats-server/);
        assert.match(error.message, new RegExp(Env.natsServer));
        return true;
      },
    );
  });

  it(`gives SERVER_NOT_FOUND when ${Env.natsServer} names nothing, rather than using another`, async () => {
    await assert.rejects(
      findServer({ env: { [Env.natsServer]: join(dir, "missing", "nats-server") } }),
      (error: unknown) => isMeshError(error, ErrorCode.SERVER_NOT_FOUND),
    );
  });

  it("gives SERVER_UNSUPPORTED for a server older than 2.9.0", async () => {
    const old = await fakeServer("old", "nats-server: v2.8.4");
    await assert.rejects(findServer({ env: { [Env.natsServer]: old } }), (error: unknown) => {
      assert.ok(isMeshError(error, ErrorCode.SERVER_UNSUPPORTED));
      assert.match(error.message, /2\.8\.4/);
      return true;
    });
  });

  it("gives SERVER_UNSUPPORTED when the version cannot be read", async () => {
    const odd = await fakeServer("odd", "hello");
    await assert.rejects(findServer({ env: { [Env.natsServer]: odd } }), (error: unknown) =>
      isMeshError(error, ErrorCode.SERVER_UNSUPPORTED),
    );
  });
});
