// mesh-assigner's tools (decision 0190; seed 003): put and unput, which the runtime loads and
// serves without a credential — a process never serves.
export { default } from "@mesh/delivery/assigner-tools";
