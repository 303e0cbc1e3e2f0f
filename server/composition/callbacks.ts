/**
 * Status callbacks (spec section 6): the service listens to video.status from its construction;
 * what a crash left unscheduled is read now, before any status can change, and written once the
 * server starts (in the background: with a large library it takes seconds).
 */
import { CallbackService } from '../callbacks/callbackService.js';
import type { ServerOptions } from '../config.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Foundation } from './foundation.js';
import type { Part } from './parts.js';

export async function openCallbacks(options: ServerOptions, { stores, events }: Foundation, jobs: JobQueue): Promise<{ service: CallbackService; part: Part }> {
  const service = new CallbackService({ store: stores.callbacks, apps: stores.apps, jobs, jobStore: stores.jobs, events, options: options.callbacks, log: options.log });
  await service.reconcile();
  return {
    service,
    part: {
      name: 'the callbacks',
      start: () => {
        void service.startCatchUp();
      },
      stop: () => service.stop(),
    },
  };
}
