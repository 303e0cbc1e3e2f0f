import type { IncomingMessage, ServerResponse } from 'node:http';
import { notedRoute } from '../http/routeTemplate.js';

/** The metric's name, as OpenTelemetry's `http.server.request.duration` is exported to Prometheus. */
export const HTTP_DURATION_METRIC = 'http_server_request_duration_seconds';

/** OpenTelemetry's advised buckets for `http.server.request.duration`, in seconds. */
export const HTTP_DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/**
 * The methods named as they are; any other is `_OTHER` (OpenTelemetry's rule for
 * `http.request.method`): a client cannot grow the series with methods of its own making.
 */
const KNOWN_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE', 'QUERY'];
const OTHER_METHOD = '_OTHER';
const METHOD_INDEX = new Map(KNOWN_METHODS.map((m, i) => [m, i]));

/** One series: its labels, a count per bucket (not cumulative; the +Inf bucket last), the sum and count. */
interface Series {
  method: string;
  route: string;
  status: number;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** When the request began (performance.now()), kept on its response. */
const STARTED = Symbol('vop.requestStarted');
interface Timed {
  [STARTED]?: number;
}

/**
 * `http_server_request_duration_seconds{http_request_method, http_route, http_response_status_code}`:
 * every request's time from its arrival to the end of its answer (or to the client going away).
 *
 * Kept here, not in a prom-client Histogram: every request of the hot paths goes through
 * {@link observe}, and prom-client's observe (even on a label child) builds a label object and a
 * hash string each time, about 0.65 µs; the detail call costs some 50 µs of CPU in all, and the
 * metrics must stay within 3% of it. Here a series is found by two map lookups on a string and a
 * number and counted in place: nothing is allocated once a series exists. The series are written
 * out in Prometheus's text format by {@link text}, beside the registry's.
 *
 * The route label is a template, noted as the request was matched (http/routeTemplate.ts); a
 * request no route matched has it empty, which Prometheus reads as absent, as OpenTelemetry
 * leaves `http.route` out when it is not known.
 */
export class RequestDurations {
  /** route -> (method index * 1000 + status) -> series. */
  private readonly routes = new Map<string, Map<number, Series>>();
  private readonly all: Series[] = [];
  private readonly bounds: Float64Array;
  /** The response's 'close' listener: one function for every response, which reads `this`. */
  private readonly onClose: (this: ServerResponse) => void;

  constructor(buckets: readonly number[] = HTTP_DURATION_BUCKETS) {
    this.bounds = Float64Array.from(buckets);
    const self = this;
    this.onClose = function (this: ServerResponse) {
      const started = (this as Timed)[STARTED];
      if (started === undefined) return;
      self.observe(this.req.method ?? '', notedRoute(this) ?? '', this.statusCode, (performance.now() - started) / 1000);
    };
  }

  /**
   * Times the request from now until its answer ends: 'close' comes after the last byte is handed
   * over, or when the client goes away first (a player that seeks drops its range request; that
   * request counts too, with its time until then).
   */
  track(_req: IncomingMessage, res: ServerResponse): void {
    (res as Timed)[STARTED] = performance.now();
    res.on('close', this.onClose);
  }

  /** Counts one request. */
  observe(method: string, route: string, status: number, seconds: number): void {
    let byKey = this.routes.get(route);
    if (byKey === undefined) {
      byKey = new Map();
      this.routes.set(route, byKey);
    }
    const m = METHOD_INDEX.get(method) ?? KNOWN_METHODS.length;
    const key = m * 1000 + status;
    let series = byKey.get(key);
    if (series === undefined) {
      series = { method: KNOWN_METHODS[m] ?? OTHER_METHOD, route, status, buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      byKey.set(key, series);
      this.all.push(series);
    }
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    series.buckets[i]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The histogram in Prometheus's text exposition format (0.0.4), ending with a newline. */
  text(): string {
    const lines = [
      `# HELP ${HTTP_DURATION_METRIC} Duration of HTTP server requests, from arrival to the end of the answer.`,
      `# TYPE ${HTTP_DURATION_METRIC} histogram`,
    ];
    for (const s of this.all) {
      const labels = `http_request_method="${escapeLabel(s.method)}",http_response_status_code="${s.status}",http_route="${escapeLabel(s.route)}"`;
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.buckets[i]!;
        lines.push(`${HTTP_DURATION_METRIC}_bucket{${labels},le="${this.bounds[i]}"} ${cumulative}`);
      }
      cumulative += s.buckets[this.bounds.length]!;
      lines.push(`${HTTP_DURATION_METRIC}_bucket{${labels},le="+Inf"} ${cumulative}`);
      lines.push(`${HTTP_DURATION_METRIC}_sum{${labels}} ${s.sum}`);
      lines.push(`${HTTP_DURATION_METRIC}_count{${labels}} ${s.count}`);
    }
    return `${lines.join('\n')}\n`;
  }
}

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
