// Types for the untyped Prometheus text parser used by the metrics test.
declare module 'parse-prometheus-text-format' {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
