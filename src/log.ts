import { pino, type Logger } from 'pino';
import type { LogFormat, LogLevel } from './config.js';

export type { Logger };

/** Structured JSON logs; `pretty` renders them for a human at a terminal (pino-pretty, synchronous to keep order). */
export function createLogger(level: LogLevel, format: LogFormat): Logger {
  if (format === 'pretty') {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true } },
    });
  }
  return pino({ level, base: { service: 'rollplane' } });
}
