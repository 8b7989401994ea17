/** Reads the Prometheus text exposition of `/_/metrics` into sums the dashboard charts. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2];
    }
    samples.push({ name: match[1], labels, value: Number(match[4]) });
  }
  return samples;
}

/** Sum of every sample named `name` whose labels pass `filter`. */
export function total(
  samples: Sample[],
  name: string,
  filter: (labels: Record<string, string>) => boolean = () => true,
): number {
  let sum = 0;
  for (const s of samples) if (s.name === name && filter(s.labels)) sum += s.value;
  return sum;
}
