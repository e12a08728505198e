import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import type { TelemetryEnvelope } from '../../../src/api/telemetry.js';

/** How long events wait to be sent together, and how long a session's end waits for the last of them. */
const BATCH_MS = 1000;
const FLUSH_MS = 5000;

/**
 * One session's telemetry, exported as OpenTelemetry log records over OTLP/HTTP (JSON) to a
 * collector's /v1/logs, by OpenTelemetry's own SDK and exporter: each event is a record named by
 * its type, with its category, seq and the session as attributes and its data as the body. The
 * headers are read for every export, so a changed ingestion key applies without a restart.
 */
export class OtlpExport {
  private readonly provider: LoggerProvider;
  private readonly logger;

  constructor(
    readonly destinationId: string,
    endpoint: string,
    headers: () => Promise<Record<string, string>>,
    sessionId: string,
  ) {
    const exporter = new OTLPLogExporter({ url: `${endpoint}/v1/logs`, headers, timeoutMillis: 10_000 });
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'rbrowse', 'browser.session_id': sessionId }),
      processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: BATCH_MS, exportTimeoutMillis: 10_000 })],
    });
    this.logger = this.provider.getLogger('rbrowse.telemetry');
  }

  emit({ seq, event }: TelemetryEnvelope): void {
    this.logger.emit({
      eventName: event.type,
      timestamp: [Math.floor(event.ts / 1e6), (event.ts % 1e6) * 1000],
      severityText: event.category === 'console' && typeof event.data?.level === 'string' ? event.data.level : 'INFO',
      body: (event.data ?? {}) as never,
      attributes: {
        'telemetry.type': event.type,
        'telemetry.category': event.category,
        'telemetry.seq': seq,
        'telemetry.source': event.source.kind,
        ...(event.truncated ? { 'telemetry.truncated': true } : {}),
      },
    });
  }

  /** Sends what is still batched (at most FLUSH_MS), then stops. */
  async close(): Promise<void> {
    await Promise.race([this.provider.shutdown().catch(() => {}), new Promise((r) => setTimeout(r, FLUSH_MS).unref())]);
  }
}
