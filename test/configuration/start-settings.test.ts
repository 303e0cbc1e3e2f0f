import { describe, expect, it } from 'vitest';
import type os from 'node:os';
import { parseStartArgs, servedAddresses, withSavedSettings } from '../../server/startArgs.js';

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

describe('start settings added for hardening and cluster mode', () => {
  it('opts loopback in for pulls with --pull-allow or VOP_PULL_ALLOW, keeping the rest of the saved pull settings', () => {
    const saved = { options: { ingest: { pull: { allow: ['10.0.0.0/8'], deny: ['10.9.0.0/16'], maxBytes: 5 } } } };
    const byFlag = withSavedSettings(parseStartArgs(['--pull-allow', '127.0.0.0/8, ::1/128'], {}), saved);
    expect(byFlag.options.ingest?.pull).toEqual({ allow: ['127.0.0.0/8', '::1/128'], deny: ['10.9.0.0/16'], maxBytes: 5 });
    const byEnv = withSavedSettings(parseStartArgs([], { VOP_PULL_ALLOW: '127.0.0.1/32' }), saved);
    expect(byEnv.options.ingest?.pull?.allow).toEqual(['127.0.0.1/32']);
    expect(withSavedSettings(parseStartArgs([], {}), saved).options.ingest?.pull?.allow).toEqual(['10.0.0.0/8']);
  });

  it('reads the database address from --database-url or VOP_DATABASE_URL', () => {
    expect(parseStartArgs(['--database-url', 'postgres://a@h/db'], {}).options.databaseUrl).toBe('postgres://a@h/db');
    expect(parseStartArgs([], { VOP_DATABASE_URL: 'postgres://b@h/db' }).options.databaseUrl).toBe('postgres://b@h/db');
    expect(parseStartArgs([], {}).options.databaseUrl).toBeUndefined();
    // Object storage from VOP_S3_*, never from flags (keys stay off the command line).
    expect(parseStartArgs([], {}).options.objectStorage).toBeUndefined();
    const s3 = parseStartArgs([], { VOP_S3_ENDPOINT: 'http://127.0.0.1:7480', VOP_S3_BUCKET: 'vop-media', VOP_S3_ACCESS_KEY_ID: 'k', VOP_S3_SECRET_ACCESS_KEY: 's', VOP_S3_FORCE_PATH_STYLE: '1' }).options.objectStorage;
    expect(s3).toMatchObject({ endpoint: 'http://127.0.0.1:7480', bucket: 'vop-media', region: 'us-east-1', forcePathStyle: true });
    expect(parseStartArgs(['--shared-media'], {}).options.sharedMedia).toBe(true);
    expect(parseStartArgs([], { VOP_SHARED_MEDIA: '1' }).options.sharedMedia).toBe(true);
    expect(parseStartArgs([], {}).options.sharedMedia).toBeUndefined();
  });

  it('knows whether the admin token came from the command line', () => {
    expect(parseStartArgs(['--admin-token', 't'], {}).adminTokenFromFlag).toBe(true);
    expect(parseStartArgs([], { VOP_ADMIN_TOKEN: 't' }).adminTokenFromFlag).toBe(false);
  });
});

describe('the addresses a server is reachable at', () => {
  const lan: ReturnType<typeof os.networkInterfaces> = {
    lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
    eth0: [
      { address: '192.168.1.20', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: '192.168.1.20/24' },
      { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:01', internal: false, cidr: 'fe80::1/64', scopeid: 2 },
    ],
  };
  const served = (host: string) => servedAddresses(host, 8080, lan).filter((a) => a.served).map((a) => a.url);

  it('bound to every interface, serves loopback and each LAN IPv4 address', () => {
    expect(servedAddresses('0.0.0.0', 8080, lan)).toEqual([
      { label: 'This machine', url: 'http://127.0.0.1:8080', served: true },
      { label: 'LAN (eth0)', url: 'http://192.168.1.20:8080', served: true },
    ]);
    expect(served('::')).toEqual(['http://127.0.0.1:8080', 'http://192.168.1.20:8080']);
  });

  it('bound to 127.0.0.1, serves that address only', () => {
    expect(servedAddresses('127.0.0.1', 8080, lan)).toEqual([
      { label: 'This machine', url: 'http://127.0.0.1:8080', served: true },
      { label: 'LAN (eth0)', url: 'http://192.168.1.20:8080', served: false },
    ]);
  });

  it('bound to ::1, does not claim 127.0.0.1 (an IPv6 socket does not answer there)', () => {
    expect(servedAddresses('::1', 8080, lan)).toEqual([
      { label: 'This machine', url: 'http://[::1]:8080', served: true },
      { label: 'LAN (eth0)', url: 'http://192.168.1.20:8080', served: false },
    ]);
  });

  it('bound to a LAN address or a host name, serves just that', () => {
    expect(served('192.168.1.20')).toEqual(['http://192.168.1.20:8080']);
    expect(served('videos.lan')).toEqual(['http://videos.lan:8080']);
  });
});
