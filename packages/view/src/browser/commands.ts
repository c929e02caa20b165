/**
 * An action as the CLI command it is: what the page asks the operator to confirm, and what the
 * view records as done. Pure (no DOM, no Node), so the page and the server say it alike.
 */
import type { ActionRequest } from "./wire.js";

const on = (node: string | undefined, all: string): string =>
  node === undefined ? all : ` --node ${node}`;

/** `mesh assign hello --node n1`, `mesh secret set hello api-token` (never the value). */
export function commandOf(request: ActionRequest): string {
  switch (request.action) {
    case "assign": {
      const { module, node, remove } = request.input;
      return `mesh ${remove ? "unassign" : "assign"} ${module}${on(node, " --all")}`;
    }
    case "put": {
      const { module, node, build } = request.input;
      return build === undefined
        ? `mesh unput ${module}${on(node, "")}`
        : `mesh put ${module} ${build}${on(node, "")}`;
    }
    case "retry":
      return `mesh retry ${request.input.module}${on(request.input.node, "")}`;
    case "configSet": {
      const { module, key, value, node } = request.input;
      return `mesh config set ${module} ${key} '${value}'${on(node, "")}`;
    }
    case "configUnset": {
      const { module, key, node } = request.input;
      return `mesh config unset ${module} ${key}${on(node, "")}`;
    }
    case "secretSet":
      return `mesh secret set ${request.input.module} ${request.input.name}`;
    case "register":
      return `mesh module add ${request.input.spec}`;
    case "rolloutSteer":
      return `mesh rollout ${request.input.steer} ${request.input.module}${request.input.config === undefined ? "" : ` --config ${request.input.config}`}`;
  }
}

/** What an action is about, so the last record of each stands: the command without its value. */
export function aboutOf(request: ActionRequest): string {
  switch (request.action) {
    case "configSet":
      return `config ${request.input.module} ${request.input.key} ${request.input.node ?? ""}`;
    case "configUnset":
      return `config ${request.input.module} ${request.input.key} ${request.input.node ?? ""}`;
    case "put":
      return `put ${request.input.module} ${request.input.node ?? ""}`;
    case "assign":
      return `assign ${request.input.module} ${request.input.node ?? ""}`;
    case "rolloutSteer":
      return `rollout ${request.input.module}`;
    default:
      return commandOf(request);
  }
}
