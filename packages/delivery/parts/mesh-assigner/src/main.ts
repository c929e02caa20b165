// mesh-assigner's process (decision 0190): the assigner on the credential the host names in
// MESH_BROKER_FILE, as it starts any module's daemon.
import { main } from "@mesh/delivery/assigner-part";

process.exitCode = await main();
