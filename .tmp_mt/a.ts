import { Registry, collectDefaultMetrics } from "prom-client";
const r = new Registry();
collectDefaultMetrics({ register: r });
console.log(await r.metrics());
