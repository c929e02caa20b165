/**
 * `@mesh/core/testing`: records made by core's rules, for the tests of the packages that read
 * them. Never imported by a package's own code.
 */
export { canaryRollout } from "./rollouts.js";
