import { describe, expect, it } from 'vitest';
import { parseStartArgs, withSavedSettings } from '../server/startArgs.js';

describe('npm start with settings saved from the console', () => {
  const saved = {
    options: { publicUrl: 'http://videos.lan:9000', processing: { concurrency: 3 }, ingest: { multipartMaxBytes: 1024 } },
    port: 9000,
  };

  it('uses the saved settings where no flag or variable is given', () => {
    const c = withSavedSettings(parseStartArgs(['--data-dir', '/tmp/x'], {}), saved);
    expect(c.port).toBe(9000);
    expect(c.options).toMatchObject({ dataDir: '/tmp/x', publicUrl: 'http://videos.lan:9000', processing: { concurrency: 3 }, ingest: { multipartMaxBytes: 1024 } });
  });

  it('lets a flag or a variable win over a saved setting', () => {
    const byFlag = withSavedSettings(parseStartArgs(['--port', '8081', '--public-url', 'http://other:8081'], {}), saved);
    expect(byFlag.port).toBe(8081);
    expect(byFlag.options.publicUrl).toBe('http://other:8081');
    const byEnv = withSavedSettings(parseStartArgs([], { VOP_PORT: '8082' }), saved);
    expect(byEnv.port).toBe(8082);
  });

  it('keeps the defaults when nothing was saved', () => {
    const c = withSavedSettings(parseStartArgs([], {}), { options: {} });
    expect(c.port).toBe(8080);
    expect(c.options.publicUrl).toBeUndefined();
    expect(c.options.processing).toBeUndefined();
  });
});
