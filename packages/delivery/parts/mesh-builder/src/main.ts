// mesh-builder's process (decision 0190): the builder on the credential the host names in
// MESH_BROKER_FILE, as it starts any module's daemon.
import { main } from "@mesh/delivery/builder-part";

process.exitCode = await main();
