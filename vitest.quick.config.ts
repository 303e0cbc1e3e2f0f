import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';
import { fullTierFiles } from './test/tiers.js';

/**
 * The quick tier alone (`npm run test:quick`): every test file but the full tier's (test/tiers.ts),
 * with no services started. `npm test` runs both tiers with vitest.config.ts.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      name: 'quick',
      exclude: fullTierFiles(),
    },
  }),
);
