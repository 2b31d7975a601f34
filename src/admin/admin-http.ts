/**
 * What every admin route group answers with: a refusal (a 4xx with a reason, counted in
 * `admin_rejected_total{reason}` and logged as `admin-request-rejected`), a zod failure as a 400
 * with its issues, and the JSON body parser (JSON only, up to 1 MB).
 */
import express, { type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { errorStatus } from '../errors/index.js';
import { describeIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

const MAX_PAGE_SIZE = 500;

/** A page size query parameter: 1 to 500, `fallback` when absent. */
export const pageSize = (fallback: number) => z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(fallback);

/** Answers a 4xx, logged and counted (`admin_rejected_total{reason}`). */
export type Refuse = (request: Request, response: Response, status: number, reason: string, body: { error: string; [field: string]: unknown }) => void;
/** Answers a 400 with the zod issues of `what`. */
export type Invalid = (request: Request, response: Response, error: z.ZodError, what: string) => void;

export interface AdminHttp {
  logRejection: (request: Request, status: number, reason: string) => void;
  refuse: Refuse;
  invalid: Invalid;
  /** JSON bodies only, up to 1 MB; parser failures go on to the app's error handler (400/413). */
  jsonBody: RequestHandler;
}

export function createAdminHttp(logger: Logger, metrics: Metrics): AdminHttp {
  const logRejection = (request: Request, status: number, reason: string) => {
    metrics.increment('admin_rejected_total', { reason });
    logger.warn('admin-request-rejected', { method: request.method, path: request.baseUrl + request.path, status, reason });
  };
  const refuse: Refuse = (request, response, status, reason, body) => {
    logRejection(request, status, reason);
    response.status(status).json(body);
  };
  const invalid: Invalid = (request, response, error, what) =>
    refuse(request, response, 400, 'invalid_request', { error: `invalid ${what}`, issues: describeIssues(error.issues) });

  const parseJson = express.json({ limit: '1mb', strict: true });
  const jsonBody: RequestHandler = (request, response, next) => {
    if (!request.is('application/json')) {
      refuse(request, response, 415, 'content_type', { error: 'expected Content-Type: application/json' });
      return;
    }
    parseJson(request, response, (error?: unknown) => {
      if (error) logRejection(request, errorStatus(error) || 400, 'body');
      next(error);
    });
  };
  return { logRejection, refuse, invalid, jsonBody };
}
