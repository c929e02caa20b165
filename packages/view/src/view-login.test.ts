/**
 * A view with logins (decision 0170) over HTTPS against a real bus: nothing is served without a
 * session; a one-time link becomes a session cookie (HttpOnly, Secure, SameSite=Strict) once; a
 * POST needs the session's CSRF token, the view's header and its own Origin; a logout ends the
 * session on the server; and the login tokens themselves (forged, expired, used twice) are
 * refused.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { makeSelfSigned } from "@mesh/bus/server";
import { deadline } from "@mesh/bus/testing";
import { ErrorCode, isMeshError } from "@mesh/protocol";
import { SESSION_CSRF_HEADER, type SessionInfo } from "./browser/wire.js";
import { WAIT_MS, codeOf, postJson, raw } from "./http-test-support.js";
import { startView, type View } from "./start-view.js";
import { ASK_ID, seedMesh, startTestMesh, type TestMesh } from "./test-support.js";
import { ViewLogins, loginToken } from "./view-logins.js";

const TLS = makeSelfSigned({ commonName: "mesh view test", hosts: ["127.0.0.1", "localhost"] });
const tls = { cert: TLS.certPem, key: TLS.keyPem };

describe("a view with logins", () => {
  let mesh: TestMesh;
  let view: View;
  let base: string;
  const get = (path: string, headers: Record<string, string> = {}) =>
    raw(`${base}${path}`, { headers, ca: TLS.certPem });

  before(async () => {
    mesh = await startTestMesh();
    await seedMesh(mesh.admin);
    view = await startView({
      bus: mesh.operator,
      tls,
      logins: new ViewLogins({ key: randomBytes(32) }),
    });
    base = view.url;
  });
  after(async () => {
    await view?.close();
    await mesh?.stop();
  });

  it("serves HTTPS and nothing without a session, the page included", async () => {
    assert.match(base, /^https:\/\/127\.0\.0\.1:\d+\/$/);
    for (const path of ["", "api/state", "api/events", "static/browser/main.js"]) {
      const response = await get(path);
      assert.equal(response.status, 401, path);
      assert.equal(codeOf(response.body), ErrorCode.PERMISSION_DENIED);
      assert.match(response.body, /needs a login.*mesh view-token/);
    }
  });

  it("makes a session of a one-time link, once, in a Secure HttpOnly SameSite=Strict cookie", async () => {
    const link = new URL(view.loginUrl({ who: "ada", access: "operate" }));
    const login = await get(`${link.pathname.slice(1)}${link.search}`);
    assert.equal(login.status, 303);
    assert.equal(login.headers["location"], "/");
    const setCookie = String(login.headers["set-cookie"]);
    assert.match(setCookie, /^mesh_view_session_\d+=[\w-]{40,};/);
    for (const flag of ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"]) {
      assert.ok(setCookie.includes(flag), `${flag} in ${setCookie}`);
    }
    // The same link again: refused, and it makes no second session.
    const again = await get(`${link.pathname.slice(1)}${link.search}`);
    assert.equal(again.status, 401);
    assert.match(again.body, /used already/);
    assert.equal(again.headers["set-cookie"], undefined);

    const cookie = setCookie.split(";")[0] ?? "";
    const page = await get("", { cookie });
    assert.equal(page.status, 200);
    const session = JSON.parse((await get("api/session", { cookie })).body) as SessionInfo;
    assert.deepEqual(
      { ...session, csrf: session.csrf.length > 20 },
      {
        who: "ada",
        access: "operate",
        csrf: true,
        login: true,
      },
    );
  });

  it("refuses a POST without the session's CSRF token or from another origin", async () => {
    const link = new URL(view.loginUrl({ who: "ada", access: "operate" }));
    const login = await get(`${link.pathname.slice(1)}${link.search}`);
    const cookie = String(login.headers["set-cookie"]).split(";")[0] ?? "";
    const { csrf } = JSON.parse((await get("api/session", { cookie })).body) as SessionInfo;
    const answer = { id: ASK_ID, answer: "yes" };
    const own = new URL(base).origin;
    const post = (headers: Record<string, string>) =>
      postJson(`${base}api/answer`, answer, { cookie, ...headers }, TLS.certPem);

    const noToken = await post({ origin: own });
    assert.equal(noToken.status, 403);
    assert.match(noToken.body, new RegExp(SESSION_CSRF_HEADER));
    const wrongToken = await post({ origin: own, [SESSION_CSRF_HEADER]: `${csrf}x` });
    assert.equal(wrongToken.status, 403);
    const elsewhere = await post({ origin: "https://evil.example", [SESSION_CSRF_HEADER]: csrf });
    assert.equal(elsewhere.status, 403);
    assert.match(elsewhere.body, /evil\.example/);
    const noSession = await postJson(
      `${base}api/answer`,
      answer,
      { origin: own, [SESSION_CSRF_HEADER]: csrf },
      TLS.certPem,
    );
    assert.equal(noSession.status, 401);

    const done = await post({ origin: own, [SESSION_CSRF_HEADER]: csrf });
    assert.equal(done.status, 200, done.body);
    assert.equal((JSON.parse(done.body) as { ok: boolean }).ok, true);
  });

  it("logs out: the session ends on the server, its cookie is cleared, its streams close, and its old cookie is refused after", async () => {
    const link = new URL(view.loginUrl({ who: "ada", access: "operate" }));
    const login = await get(`${link.pathname.slice(1)}${link.search}`);
    const cookie = String(login.headers["set-cookie"]).split(";")[0] ?? "";
    const { csrf } = JSON.parse((await get("api/session", { cookie })).body) as SessionInfo;
    const own = new URL(base).origin;
    const headers = { cookie, origin: own, [SESSION_CSRF_HEADER]: csrf };
    // An event stream of the session, open while it logs out: it ends with the session.
    const stream = get("api/events", { cookie });
    // Another site cannot log the operator out: a logout is a POST with every POST's doors.
    const forged = await postJson(`${base}logout`, {}, { cookie, origin: own }, TLS.certPem);
    assert.equal(forged.status, 403);
    assert.equal((await get("api/session", { cookie })).status, 200, "still logged in");

    const out = await postJson(`${base}logout`, {}, headers, TLS.certPem);
    assert.equal(out.status, 200, out.body);
    const cleared = String(out.headers["set-cookie"]);
    assert.match(cleared, /^mesh_view_session_\d+=;/);
    assert.match(cleared, /Max-Age=0/);
    const ended = await deadline(stream, WAIT_MS, "the session's event stream to end");
    assert.equal(ended.status, 200);
    // The old cookie, kept by whoever held it: refused as no login, for a read and an action.
    assert.equal((await get("api/session", { cookie })).status, 401);
    const action = await postJson(
      `${base}api/answer`,
      { id: ASK_ID, answer: "no" },
      headers,
      TLS.certPem,
    );
    assert.equal(action.status, 401);
    assert.equal(codeOf(action.body), ErrorCode.PERMISSION_DENIED);
    const again = await postJson(`${base}logout`, {}, headers, TLS.certPem);
    assert.equal(again.status, 401);
  });

  it("refuses logins without TLS, and a token beside logins", async () => {
    const logins = new ViewLogins({ key: randomBytes(32) });
    await assert.rejects(startView({ bus: mesh.operator, logins }), (error) =>
      isMeshError(error, ErrorCode.VIEW_UNPROTECTED),
    );
    await assert.rejects(
      startView({ bus: mesh.operator, logins, tls, token: "a-token-of-enough-length-0123456789" }),
      (error) => isMeshError(error, ErrorCode.USAGE),
    );
  });
});

describe("login tokens", () => {
  const key = randomBytes(32);

  it("are redeemed once, before they expire, and only with the key that signed them", () => {
    let now = 1_000_000;
    const logins = new ViewLogins({ key, now: () => now });
    const token = logins.issue({ who: "ada", access: "read", ttlMs: 60_000 });
    const session = logins.redeem(token);
    assert.equal(session.access, "read");
    assert.equal(logins.session(session.id)?.who, "ada");
    assert.throws(() => logins.redeem(token), /used already/);

    const forged = loginToken(randomBytes(32), { who: "eve", access: "operate", now });
    assert.throws(() => logins.redeem(forged), /not one of this view's/);
    const [body = "", signature = ""] = logins.issue({ who: "ada", access: "read" }).split(".");
    const widened = Buffer.from(
      JSON.stringify({
        ...(JSON.parse(Buffer.from(body, "base64url").toString()) as object),
        a: "operate",
      }),
    ).toString("base64url");
    assert.throws(() => logins.redeem(`${widened}.${signature}`), /not one of this view's/);

    const late = logins.issue({ who: "ada", access: "operate", ttlMs: 60_000 });
    now += 60_001;
    assert.throws(() => logins.redeem(late), /expired/);
    // Sessions end too.
    now += 12 * 3600_000;
    assert.equal(logins.session(session.id), undefined);
  });
});
