/**
 * One tool served on one node, as service discovery describes it: the endpoint of the module's
 * service and its metadata. The bus's discovery finds them, the view lists them.
 */
export interface ServedTool {
  readonly node: string;
  readonly module: string;
  readonly tool: string;
  /** `mesh.tools.<node>.<module>.<tool>` */
  readonly subject: string;
  readonly description: string;
  /** The input's JSON Schema; undefined when the endpoint did not say it. */
  readonly input: unknown;
  readonly output: unknown;
  /** What was wrong with its metadata (a schema that is not JSON): shown, never thrown. */
  readonly problems: readonly string[];
}
