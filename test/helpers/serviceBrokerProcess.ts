/**
 * The service broker in a process of its own (test/globalSetup.ts forks it). Starting PostgreSQL
 * and Ceph runs their commands synchronously (pg_ctl, ceph-mon, …: up to a minute under load),
 * which in vitest's main process would stall every worker's module loading and reporting with
 * it. Here only the files that asked for the service wait.
 *
 * It tells its parent the broker's address, closes everything on `close`, and kills what it
 * started, then removes the run's folder, if its parent goes away without asking (an
 * interrupted run).
 */
import fs from 'node:fs';
import { startServiceBroker } from './serviceBroker.js';

// Ctrl-C or a supervisor's signal reaches the whole process group: this process waits for its
// parent to go (disconnect, below) so that it still kills what it started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => undefined);

const broker = await startServiceBroker();
process.on('message', (message) => {
  if (message !== 'close') return;
  void broker.close().finally(() => process.exit(0));
});
process.on('disconnect', () => {
  broker.killNow();
  // The run's folder, which the parent leaves to this process, goes last: a service still
  // starting has no handle for killNow yet, and its own exit handler (registered before this
  // one) finds its daemons by the pid files in that folder.
  process.once('exit', () => {
    const root = process.env.VOP_TEST_RUN_ROOT;
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });
  process.exit(1);
});
process.send!({ address: broker.address });
