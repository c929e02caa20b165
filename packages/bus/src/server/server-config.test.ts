import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode, isMeshError, type Permissions } from "@mesh/protocol";
import {
  FULL_PERMISSIONS,
  hashPassword,
  quoteConfigString,
  renderServerConfig,
  verifyPassword,
  type ServerConfigOptions,
  type ServerUser,
} from "./server-config.js";

// A well-formed bcrypt hash; the renderer checks the shape, not the password.
const HASH = "$2b$10$59J/Dieu0nHgKxSm4HzEneIOZL0dLDo6pycOewLm.as87RHOQHh/C";

const user = (name: string, permissions: Permissions): ServerUser => ({
  user: name,
  passwordHash: HASH,
  permissions,
});

const base: ServerConfigOptions = {
  serverVersion: "2.9.10",
  serverName: "mesh",
  port: 4222,
  storeDir: "/var/lib/mesh/bus/store",
  users: [user("admin", FULL_PERMISSIONS)],
};

/** The permissions block of the only user in the config. */
function permissionsOf(permissions: Permissions): string {
  const text = renderServerConfig({ ...base, users: [user("u", permissions)] });
  const start = text.indexOf("permissions: {");
  return text
    .slice(start, text.indexOf("\n      }", start))
    .split("\n")
    .map((line) => line.trim())
    .join(" ");
}

describe("renderServerConfig permissions", () => {
  const cases: { name: string; permissions: Permissions; want: string }[] = [
    {
      name: 'an empty allow list becomes deny ">" (an empty allow would allow everything)',
      permissions: { publish: { allow: [] }, subscribe: { allow: [] } },
      want: 'permissions: { publish: { deny: [">"] } subscribe: { deny: [">"] }',
    },
    {
      name: 'a missing allow list becomes deny ">"',
      permissions: { publish: {}, subscribe: {} },
      want: 'permissions: { publish: { deny: [">"] } subscribe: { deny: [">"] }',
    },
    {
      name: "a deny list without an allow list still denies everything",
      permissions: { publish: { deny: ["a.b"] }, subscribe: {} },
      want: 'permissions: { publish: { deny: [">"] } subscribe: { deny: [">"] }',
    },
    {
      name: "allow and deny are both written",
      permissions: {
        publish: { allow: ["a.>"], deny: ["a.secret"] },
        subscribe: { allow: ["_INBOX.n1.m1.>"] },
      },
      want: 'permissions: { publish: { allow: ["a.>"], deny: ["a.secret"] } subscribe: { allow: ["_INBOX.n1.m1.>"] }',
    },
    {
      name: "subjects with $ > and * are quoted and kept as they are",
      permissions: {
        publish: { allow: ["$JS.API.CONSUMER.CREATE.KV_cfg.*.$KV.cfg.>", "$KV.cfg.>"] },
        subscribe: { allow: ["$SRV.*"] },
      },
      want:
        'permissions: { publish: { allow: ["$JS.API.CONSUMER.CREATE.KV_cfg.*.$KV.cfg.>", "$KV.cfg.>"] } ' +
        'subscribe: { allow: ["$SRV.*"] }',
    },
    {
      name: "allowResponses adds allow_responses, also when nothing may be published",
      permissions: { publish: {}, subscribe: { allow: ["svc.a.>"] }, allowResponses: true },
      want: 'permissions: { publish: { deny: [">"] } subscribe: { allow: ["svc.a.>"] } allow_responses: true',
    },
    {
      name: "allowResponses with a max (and an expiry) writes the server's map form",
      permissions: {
        publish: {},
        subscribe: { allow: ["svc.a.>"] },
        allowResponses: { max: 3, expiresMs: 5000 },
      },
      want:
        'permissions: { publish: { deny: [">"] } subscribe: { allow: ["svc.a.>"] } ' +
        'allow_responses: { max: 3, expires: "5000ms" }',
    },
    {
      name: "allowResponses false writes nothing",
      permissions: {
        publish: { allow: ["x"] },
        subscribe: { allow: ["y"] },
        allowResponses: false,
      },
      want: 'permissions: { publish: { allow: ["x"] } subscribe: { allow: ["y"] }',
    },
  ];
  for (const { name, permissions, want } of cases) {
    it(name, () => {
      assert.equal(permissionsOf(permissions), want);
    });
  }

  it("never writes an empty list", () => {
    const text = renderServerConfig({
      ...base,
      users: [user("a", { publish: { allow: [], deny: [] }, subscribe: { deny: [] } })],
    });
    assert.doesNotMatch(text, /\[\s*\]/);
  });
});

describe("quoteConfigString", () => {
  const cases: { input: string; want: string }[] = [
    { input: "plain", want: '"plain"' },
    // $ stays literal inside double quotes; unquoted it would be a variable reference.
    { input: HASH, want: `"${HASH}"` },
    { input: "$KV.cfg.>", want: '"$KV.cfg.>"' },
    { input: 'say "hi"', want: '"say \\"hi\\""' },
    { input: "back\\slash", want: '"back\\\\slash"' },
    { input: "tab\tnew\nret\r", want: '"tab\\tnew\\nret\\r"' },
    { input: "bell\u0007del\u007f", want: '"bell\\x07del\\x7f"' },
    { input: "héllo", want: '"héllo"' },
    { input: "a # b // c ; d , e } f ]", want: '"a # b // c ; d , e } f ]"' },
  ];
  for (const { input, want } of cases) {
    it(`quotes ${JSON.stringify(input)}`, () => assert.equal(quoteConfigString(input), want));
  }
});

describe("renderServerConfig", () => {
  it("writes the listener, JetStream store and limits, and every string quoted", () => {
    const text = renderServerConfig({ ...base, maxMemoryStore: 1024, maxFileStore: 2048 });
    assert.match(text, /^server_name: "mesh"$/m);
    assert.match(text, /^host: "127\.0\.0\.1"$/m);
    assert.match(text, /^port: 4222$/m);
    assert.match(text, /^ {2}store_dir: "\/var\/lib\/mesh\/bus\/store"$/m);
    assert.match(text, /^ {2}max_memory_store: 1024$/m);
    assert.match(text, /^ {2}max_file_store: 2048$/m);
    assert.match(text, new RegExp(`password: "${HASH.replace(/[$.*/]/g, "\\$&")}"`));
    assert.doesNotMatch(text, /^tls/m);
  });

  it("lets the server pick the port when given 0", () => {
    assert.match(renderServerConfig({ ...base, port: 0 }), /^port: -1$/m);
  });

  it("writes a tls block when given certificate and key", () => {
    const text = renderServerConfig({
      ...base,
      tls: { certFile: "/c/cert.pem", keyFile: "/c/key.pem" },
    });
    assert.match(
      text,
      /tls \{\n {2}cert_file: "\/c\/cert\.pem"\n {2}key_file: "\/c\/key\.pem"\n {2}timeout: 2\n\}/,
    );
  });

  const syncCases: { version: string; written: boolean }[] = [
    { version: "2.9.0", written: false },
    { version: "2.9.10", written: false },
    { version: "2.9.25", written: false },
    { version: "2.10.0", written: true },
    { version: "2.11.4", written: true },
    { version: "3.0.0", written: true },
  ];
  for (const { version, written } of syncCases) {
    it(`${written ? "writes" : "leaves out"} sync_interval for ${version}`, () => {
      const text = renderServerConfig({ ...base, serverVersion: version });
      assert.equal(/sync_interval: "always"/.test(text), written);
    });
  }

  it("is deterministic", () => {
    assert.equal(renderServerConfig(base), renderServerConfig({ ...base }));
  });

  const refusals: { name: string; options: ServerConfigOptions }[] = [
    {
      name: "an empty users list (it would turn authorization off)",
      options: { ...base, users: [] },
    },
    {
      name: "a plain password",
      options: {
        ...base,
        users: [{ user: "a", passwordHash: "secret", permissions: FULL_PERMISSIONS }],
      },
    },
    {
      name: "a user listed twice",
      options: { ...base, users: [user("a", FULL_PERMISSIONS), user("a", FULL_PERMISSIONS)] },
    },
    { name: "an empty user name", options: { ...base, users: [user("", FULL_PERMISSIONS)] } },
    {
      name: "a blank subject",
      options: { ...base, users: [user("a", { publish: { allow: [" "] }, subscribe: {} })] },
    },
    {
      name: "a subject with a newline",
      options: { ...base, users: [user("a", { publish: {}, subscribe: { allow: ["a\nb"] } })] },
    },
    { name: "a port out of range", options: { ...base, port: 70000 } },
    { name: "a server name with a space", options: { ...base, serverName: "my mesh" } },
  ];
  for (const { name, options } of refusals) {
    it(`refuses ${name} with INVALID_VALUE`, () => {
      assert.throws(
        () => renderServerConfig(options),
        (error: unknown) => isMeshError(error, ErrorCode.INVALID_VALUE),
      );
    });
  }
});

describe("hashPassword", () => {
  it("makes a $2b$ bcrypt hash of cost 10 that verifies", async () => {
    const hash = await hashPassword("s3cret$pw");
    assert.match(hash, /^\$2b\$10\$/);
    assert.equal(await verifyPassword("s3cret$pw", hash), true);
    assert.equal(await verifyPassword("other", hash), false);
  });

  it("refuses a password bcrypt would cut short", async () => {
    await assert.rejects(hashPassword("x".repeat(73)), (error: unknown) =>
      isMeshError(error, ErrorCode.INVALID_VALUE),
    );
  });
});

describe("renderServerConfig cluster", () => {
  const routes = ["nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6223"];
  it("writes the cluster block with its name, route listener and every route", () => {
    const text = renderServerConfig({ ...base, cluster: { name: "mesh", port: 6222, routes } });
    assert.match(
      text,
      /cluster \{\n {2}name: "mesh"\n {2}host: "127.0.0.1"\n {2}port: 6222\n {2}routes: \["nats-route:\/\/127.0.0.1:6222", "nats-route:\/\/127.0.0.1:6223"\]\n\}/,
    );
  });
  it("refuses a route that is not nats-route://host:port", () => {
    assert.throws(
      () =>
        renderServerConfig({
          ...base,
          cluster: { name: "mesh", port: 6222, routes: ["nats://127.0.0.1:6222"] },
        }),
      (error) => isMeshError(error, ErrorCode.INVALID_VALUE) && /nats-route/.test(error.message),
    );
  });
});
