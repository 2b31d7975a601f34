/**
 * In-process counters and latency samples, exposed in Prometheus text format on /metrics.
 * Counters are per process; an operator's scraper sums them across web and worker processes.
 */
export interface Metrics {
  increment(name: string, labels?: Record<string, string>, by?: number): void;
  value(name: string, labels?: Record<string, string>): number;
  render(): string;
}

function key(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, value]) => `${label}="${value.replace(/["\\\n]/g, '_')}"`);
  return parts.length ? `${name}{${parts.join(',')}}` : name;
}

export function createMetrics(): Metrics {
  const counters = new Map<string, number>();
  return {
    increment(name, labels, by = 1) {
      const id = key(name, labels);
      counters.set(id, (counters.get(id) ?? 0) + by);
    },
    value(name, labels) {
      return counters.get(key(name, labels)) ?? 0;
    },
    render() {
      return [...counters].map(([id, count]) => `${id} ${count}`).join('\n') + '\n';
    },
  };
}
