import { pino } from "pino";

/** Structured JSON logs, one line per event (pino). */
export type Logger = pino.Logger;

export function createLogger(level = "info"): Logger {
  return pino({
    level,
    base: { service: "team-protocols" },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

/** A logger that writes nothing (tests). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
