/**
 * What every metric family is built with: svc's own prom-client registry (never the global one),
 * the typed handles components hold, the shared bucket layouts, and a gauge read at scrape time.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** Handles a component holds; `L` is a bounded label set. */
export type CounterHandle = { inc(value?: number): void };
export type LabelledCounterHandle<L> = { inc(labels: L, value?: number): void };
export type GaugeHandle = {
  set(value: number): void;
  inc(value?: number): void;
  dec(value?: number): void;
};
/** `startTimer()` returns a function that observes the elapsed seconds and returns them. */
export type HistogramHandle = { observe(value: number): void; startTimer(): () => number };
export type LabelledHistogramHandle<L> = { observe(labels: L, value: number): void };

/** Default Prometheus buckets, 5 ms to 10 s. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const KIB = 1024;
const MIB = 1024 * KIB;
/**
 * Body-size buckets are binary multiples (1 KiB = 1024 ... 100 MiB = 104857600): S3 clients cut
 * parts and chunks in powers of two, so a 1 MiB or 8 MiB body lands on a bucket boundary.
 */
export const SIZE_BUCKETS = [KIB, 10 * KIB, 100 * KIB, MIB, 10 * MIB, 100 * MIB];
const CODEC_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];
export const CODEC_BUCKETS = CODEC_MS.map((ms) => ms / 1000);
export const RATIO_BUCKETS = [0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/** One registry and the three constructors that register on it; each family builds on this. */
export interface MetricRegistry {
  registry: Registry;
  registers: Registry[];
  counter<L extends string = never>(name: string, help: string, labelNames?: L[]): Counter<L>;
  gauge<L extends string = never>(name: string, help: string, labelNames?: L[]): Gauge<L>;
  histogram<L extends string = never>(
    name: string,
    help: string,
    buckets: number[],
    labelNames?: L[],
  ): Histogram<L>;
}

export function metricRegistry(): MetricRegistry {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    registers,
    counter: (name, help, labelNames = []) => new Counter({ name, help, labelNames, registers }),
    gauge: (name, help, labelNames = []) => new Gauge({ name, help, labelNames, registers }),
    histogram: (name, help, buckets, labelNames = []) =>
      new Histogram({ name, help, buckets, labelNames, registers }),
  };
}

/** A gauge read from `source` at scrape time, with no sample while there is no source. */
export class SourcedGauge extends Gauge {
  readonly #source?: () => number;
  constructor(name: string, help: string, registers: Registry[], source?: () => number) {
    super({ name, help, registers });
    this.#source = source;
  }
  override async get() {
    const metric = await super.get();
    if (!this.#source) return { ...metric, values: [] };
    return { ...metric, values: [{ value: this.#source(), labels: {} }] };
  }
}
