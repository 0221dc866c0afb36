import { expect } from "vitest";
import { parsePrometheusText, type Scrape } from "./prometheus-text.js";

/** GET /metrics over HTTP/1.1 (fetch), parsed strictly. */
export async function scrapeMetrics(
  url: string,
  headers: Record<string, string> = {},
): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

/** A sample's value, 0 when absent (a counter not yet incremented). */
export const metricValue = (s: Scrape, name: string, labels?: Record<string, string>) =>
  s.value(name, labels) ?? 0;
