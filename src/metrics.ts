/**
 * Counters and latency histograms on prom-client, exposed in Prometheus text format on /metrics.
 * Each service builds its own Registry (never prom-client's global one), so tests running
 * several services in one process don't share or collide on a metric. Counters are created on
 * first use from any call site; histograms are declared here, so their buckets and label names
 * are fixed and an `observe` with an unknown name or label does not type-check. Counters are
 * per process; an operator's scraper sums them across web and worker processes.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

interface HistogramSpec {
  help: string;
  labelNames: readonly string[];
  buckets: readonly number[];
}

/** Seconds: from a few milliseconds (acks, sends) to a minute (a slow model run). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Every histogram the service may observe. */
const HISTOGRAMS = {
  webhook_ack_seconds: {
    help: 'Time from an inbound webhook or widget message request to its response, by channel and status',
    labelNames: ['channel', 'status'],
    buckets: LATENCY_BUCKETS,
  },
  queue_wait_seconds: {
    help: 'Time a job waited in a queue before a worker started it, by queue (turns, handoff-notices)',
    labelNames: ['queue'],
    buckets: LATENCY_BUCKETS,
  },
  turn_duration_seconds: {
    help: "The orchestrator's time for one turn (judge, tools and model), by channel and outcome",
    labelNames: ['channel', 'outcome'],
    buckets: LATENCY_BUCKETS,
  },
  model_call_duration_seconds: {
    help: 'One model call (all its steps), by tier, purpose (judge, reply) and outcome (ok, failed)',
    labelNames: ['tier', 'purpose', 'outcome'],
    buckets: LATENCY_BUCKETS,
  },
  send_duration_seconds: {
    help: "One reply part's send through the channel's API, by channel and outcome",
    labelNames: ['channel', 'outcome'],
    buckets: LATENCY_BUCKETS,
  },
  handoff_notice_latency_seconds: {
    help: "From a hand-off's notice being queued to it being sent, by destination kind",
    labelNames: ['kind'],
    buckets: LATENCY_BUCKETS,
  },
} as const satisfies Record<string, HistogramSpec>;

type HistogramName = keyof typeof HISTOGRAMS;
type HistogramLabels<N extends HistogramName> = Partial<Record<(typeof HISTOGRAMS)[N]['labelNames'][number], string>>;

export interface Metrics {
  increment(name: string, labels?: Record<string, string>, by?: number): void;
  /** A counter's current value (0 when never incremented with these labels). */
  value(name: string, labels?: Record<string, string>): number;
  /** Records one sample, in seconds, in a declared histogram. */
  observe<N extends HistogramName>(name: N, labels: HistogramLabels<N>, seconds: number): void;
  /** Sets a gauge (declared on first use, no labels), e.g. the transcript outbox backlog. */
  setGauge(name: string, value: number): void;
  /** A gauge's last value (0 when never set). */
  gaugeValue(name: string): number;
  /** The registry in Prometheus text format. */
  render(): Promise<string>;
  /** The Content-Type of `render()`'s output. */
  readonly contentType: string;
}

/** A label set's identity: its entries by name (any fixed order will do; code-point order is the cheap one). */
function key(labels: Record<string, string> = {}): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

interface CounterState {
  counter: Counter;
  labelNames: Set<string>;
  /** Label set → value: the source of `value()`, and what a re-declared counter starts from. */
  series: Map<string, { labels: Record<string, string>; value: number }>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const counters = new Map<string, CounterState>();
  const histograms = new Map<string, Histogram>();
  const gauges = new Map<string, { gauge: Gauge; value: number }>();
  for (const [name, spec] of Object.entries(HISTOGRAMS)) {
    histograms.set(name, new Histogram({ name, help: spec.help, labelNames: spec.labelNames, buckets: [...spec.buckets], registers: [registry] }));
  }

  const declareCounter = (name: string, labelNames: Set<string>, series: CounterState['series']): CounterState => {
    registry.removeSingleMetric(name);
    const counter = new Counter({ name, help: `${name.replaceAll('_', ' ')}`, labelNames: [...labelNames], registers: [registry] });
    for (const entry of series.values()) counter.inc(entry.labels, entry.value);
    const state = { counter, labelNames, series };
    counters.set(name, state);
    return state;
  };

  return {
    increment(name, labels = {}, by = 1) {
      let state = counters.get(name) ?? declareCounter(name, new Set(Object.keys(labels)), new Map());
      // A call site with a label this counter has not seen: declare it again with the union,
      // carrying every series over (prom-client fixes label names at declaration).
      if (Object.keys(labels).some((label) => !state.labelNames.has(label))) {
        state = declareCounter(name, new Set([...state.labelNames, ...Object.keys(labels)]), state.series);
      }
      const id = key(labels);
      const entry = state.series.get(id);
      if (entry) entry.value += by;
      else state.series.set(id, { labels: { ...labels }, value: by });
      state.counter.inc(labels, by);
    },
    value(name, labels) {
      return counters.get(name)?.series.get(key(labels))?.value ?? 0;
    },
    observe(name, labels, seconds) {
      histograms.get(name)?.observe(labels as Record<string, string>, seconds);
    },
    setGauge(name, value) {
      const state = gauges.get(name) ?? { gauge: new Gauge({ name, help: name.replaceAll('_', ' '), registers: [registry] }), value: 0 };
      gauges.set(name, state);
      state.value = value;
      state.gauge.set(value);
    },
    gaugeValue: (name) => gauges.get(name)?.value ?? 0,
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
