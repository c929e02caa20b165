/** The bucket mirror ("informer"); exported from `@mesh/bus`. */
export {
  ALL,
  Mirror,
  type Dirty,
  type Kept,
  type MirrorChange,
  type MirrorOptions,
  type MirrorSource,
  type Sources,
  type Touched,
} from "./mirror.js";
