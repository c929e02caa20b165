import { Env, secretFilePath, secretsFolder, type Manifest } from "@mesh/protocol";

/**
 * Where a process finds its module's secret files: the module's secrets folder, and every
 * declared secret by name (JSON), which `secretPath(name)` of `@mesh/sdk/process` reads.
 */
export function secretsEnv(m: Manifest, root: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of Object.keys(m["own-secrets"]).sort()) {
    const declared = m["own-secrets"][name];
    if (declared !== undefined) files[name] = secretFilePath(root, m.module, declared.path);
  }
  return {
    [Env.secretsDir]: secretsFolder(root, m.module),
    [Env.secretFiles]: JSON.stringify(files),
  };
}
