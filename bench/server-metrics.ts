/** The server's /metrics (Prometheus text), read by scenarios that check what it counted. */
export async function scrapeMetrics(url: string, signal: AbortSignal): Promise<string> {
  try {
    return await (await fetch(`${url}/metrics`, { signal })).text();
  } catch (err) {
    const e = err as Error & { cause?: Error };
    throw new Error(`GET /metrics: ${e.cause?.message ?? e.message}`);
  }
}

/** The value of one sample, e.g. `team_subscriptions` or `name{label="x"}`; 0 when absent. */
export function sampleValue(text: string, sample: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}
