import crypto from 'node:crypto';

/** VideoId of a test delivery: the nil UUID, which no video ever has. */
export const TEST_VIDEO_ID = '00000000-0000-0000-0000-000000000000';

/** What one attempt sends, before the address is known. */
export interface CallbackPayload {
  /** The delivery id (`webhook-id`). */
  deliveryId: string;
  appId: string;
  /** The application's secret at the time of the attempt. */
  secret: string;
  videoId: string;
  videoStatus: number;
  /** A test delivery from the admin API: adds `Test=1` to the body. */
  test: boolean;
  /** Unix seconds of the attempt: `Timestamp` and `webhook-timestamp`. */
  timestamp: number;
}

/** The body and headers of one attempt. */
export interface CallbackRequest {
  body: string;
  headers: Record<string, string>;
}

/**
 * Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 over `<id>.<timestamp>.<body>`. The key
 * is the AppSecret's UTF-8 bytes (not a base64 `whsec_` key as Standard Webhooks' own libraries
 * expect: the application already holds the AppSecret, and nothing else).
 */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const mac = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/**
 * The request of spec section 6 as vop sends it: a form body with VideoId and VideoStatus, plus
 * AppId and Timestamp; and the Standard Webhooks headers, whose HMAC authenticates it. Timestamp
 * and signature are fresh on every attempt; the id never changes.
 *
 * No `Token` (MD5 of Timestamp + AppSecret): that is the spec API's own credential, accepted for
 * ten minutes, and callback bodies end up in logs and may travel over plain http (issue 12,
 * item 2). Nothing in a callback is accepted by the API.
 */
export function buildCallbackRequest(p: CallbackPayload): CallbackRequest {
  const timestamp = String(p.timestamp);
  const fields: Record<string, string> = {
    VideoId: p.videoId,
    VideoStatus: String(p.videoStatus),
    AppId: p.appId,
    Timestamp: timestamp,
  };
  if (p.test) fields.Test = '1';
  const body = new URLSearchParams(fields).toString();
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'webhook-id': p.deliveryId,
      'webhook-timestamp': timestamp,
      'webhook-signature': webhookSignature(p.secret, p.deliveryId, p.timestamp, body),
    },
  };
}
