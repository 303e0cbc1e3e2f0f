/** The console's warning about callbacks that would cross networks unencrypted (issue 12, item 2). */
import { describe, expect, it } from 'vitest';
import { isPlainHttpOffLan } from '../../renderer/src/callbackAddress.js';

describe('isPlainHttpOffLan', () => {
  it('warns about plain http to a public name or address', () => {
    for (const a of ['http://site.example/vop/callback', 'http://203.0.113.7:8080/cb', 'http://[2001:db8::1]/cb', 'http://172.32.0.1/cb']) {
      expect(isPlainHttpOffLan(a), a).toBe(true);
    }
  });

  it('says nothing of https, of this machine, of private and link-local addresses, or of LAN names', () => {
    for (const a of [
      'https://site.example/vop/callback',
      'http://127.0.0.1:3000/cb',
      'http://localhost/cb',
      'http://10.1.2.3/cb',
      'http://172.16.0.9/cb',
      'http://192.168.1.20/cb',
      'http://169.254.1.1/cb',
      'http://[::1]/cb',
      'http://[fd12:3456::1]/cb',
      'http://intranet/cb',
      'http://nas.local/cb',
      'http://app.home.arpa/cb',
      'not an address',
      '',
    ]) {
      expect(isPlainHttpOffLan(a), a).toBe(false);
    }
  });
});
