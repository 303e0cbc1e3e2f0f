/**
 * A node as `npm start` runs it (server/main.ts: its flags and VOP_* variables, the saved
 * settings under them), with ingest options from `VOP_TEST_INGEST` (JSON) on top: main.ts has no
 * flag for the free-space margin, which the reservation tests set per node. Prints the line
 * startNodeGroup-style helpers wait for; ends cleanly on SIGTERM.
 */
import { bootstrapServer } from '../../server/bootstrap.js';
import { parseStartArgs } from '../../server/startArgs.js';

const config = parseStartArgs(process.argv.slice(2));
config.options.ingest = { ...config.options.ingest, ...JSON.parse(process.env.VOP_TEST_INGEST ?? '{}') };
const { vop, config: started } = await bootstrapServer(config);
process.on('SIGTERM', () => void vop.close(500).then(() => process.exit(0)));
const { port } = await vop.listen(started.port, started.host);
console.log(`vop listening on http://127.0.0.1:${port}`);
