import os from "node:os";

export interface Machine {
  cores: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  platform: string;
  kernel: string;
  /** 1-minute load average when the run started: a busy machine skews every figure. */
  loadAverage1m: number;
}

/** The 1-minute load average now (also taken at the end of the run). */
export const loadAverage1m = () => Math.round((os.loadavg()[0] ?? 0) * 100) / 100;

export function describeMachine(): Machine {
  const cpus = os.cpus();
  return {
    cores: os.availableParallelism?.() ?? cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    loadAverage1m: loadAverage1m(),
  };
}
