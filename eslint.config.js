// Lint rules that catch control-plane bugs: floating promises, non-exhaustive switches,
// value imports of types, and imports that reach into another package's internals.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "**/dist/**",
      "**/node_modules/**",
      "**/*.d.ts",
      "bench/out/**",
      ".mesh/**",
      "pack/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      // A switch with a default case chose to handle the rest; one without must name every case.
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true },
      ],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "@typescript-eslint/only-throw-error": "error",
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@mesh/*/src/*", "@mesh/*/dist/*", "../../*/src/*", "../../../*/src/*"],
              message:
                "Import another package through its public entry (@mesh/<package>), never its internals.",
            },
            {
              group: ["@nats-io/*"],
              message: "Only @mesh/bus speaks NATS; use its helpers.",
            },
          ],
        },
      ],
    },
  },
  {
    // The bus package is the one place that may import the NATS client.
    files: ["packages/bus/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@mesh/*/src/*", "@mesh/*/dist/*", "../../*/src/*"],
              message:
                "Import another package through its public entry (@mesh/<package>), never its internals.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ["scripts/**/*.js", "bench/*.js", "eslint.config.js"],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
  },
  // Code stays readable in pieces (issue 10): no file over 500 lines; no function over 80 lines
  // outside tests and the test kits; bench/ and scripts/ are held to it like the packages.
  {
    files: ["**/*.ts", "**/*.js", "**/*.mjs"],
    rules: { "max-lines": ["error", { max: 500 }] },
  },
  {
    files: [
      "packages/**/*.ts",
      "packages/**/*.js",
      "scripts/**/*.js",
      "bench/**/*.ts",
      "bench/*.js",
    ],
    ignores: ["**/*.test.ts", "packages/*/src/testing/**"],
    rules: { "max-lines-per-function": ["error", { max: 80 }] },
  },
);
