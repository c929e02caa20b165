/**
 * The mesh's version: what hosts say in their presence, services report, and `mesh --version`
 * prints. Every package's package.json carries the same (a test checks).
 */
export const MESH_VERSION = "0.1.0";
