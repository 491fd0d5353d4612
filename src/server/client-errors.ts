/**
 * Answers to requests that Node's HTTP parser refuses before fastify sees them: a bad
 * Content-Length, headers over the size limit, a malformed request line or header, a body cut short
 * by the end of the connection, a request not received completely in time. Node hands these to the
 * server's 'clientError' event with the raw socket; the answer is written on the socket, in the API's
 * one error format `{ error: { code, message } }`, and the connection is closed (the parser's state
 * is lost, so nothing more can be read from it).
 */
import { maxHeaderSize, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { HttpError } from './errors.js';
import { SECURITY_HEADERS } from './security.js';

const BAD_CONTENT_LENGTH =
  'The Content-Length header is invalid: not a number, given twice with different values, or given with Transfer-Encoding';
const BAD_REQUEST_LINE = 'The request line is malformed; expected `METHOD /path HTTP/1.1`';

/** llhttp's error codes (and Node's), and what the client is told. Anything else is a malformed request. */
const PARSER_ERRORS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: BAD_CONTENT_LENGTH,
  HPE_UNEXPECTED_CONTENT_LENGTH: BAD_CONTENT_LENGTH,
  HPE_INVALID_METHOD: BAD_REQUEST_LINE,
  HPE_INVALID_URL: BAD_REQUEST_LINE,
  HPE_INVALID_VERSION: BAD_REQUEST_LINE,
  HPE_INVALID_CONSTANT: BAD_REQUEST_LINE,
  HPE_INVALID_EOF_STATE: 'The connection ended before the request was complete (a body shorter than its Content-Length?)',
};

/**
 * What a request refused by the parser is answered; undefined when there is no one to answer (the
 * client reset the connection).
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException & { reason?: unknown }, requestTimeoutMs: number): HttpError | undefined {
  const code = error.code ?? '';
  if (code === 'ECONNRESET' || code === 'EPIPE') return undefined;
  if (code === 'HPE_HEADER_OVERFLOW')
    return new HttpError('HEADERS_TOO_LARGE', `The request's headers are over ${maxHeaderSize} bytes, the service's limit`);
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new HttpError(
      'REQUEST_TIMEOUT',
      `The request was not received completely within ${requestTimeoutMs / 1000} s (a body shorter than its Content-Length?)`,
    );
  }
  const known = PARSER_ERRORS[code];
  if (known) return new HttpError('BAD_REQUEST', known);
  const reason = typeof error.reason === 'string' ? `: ${error.reason.slice(0, 100)}` : '';
  return new HttpError('BAD_REQUEST', `The request is not valid HTTP/1.1${reason}`);
}

/**
 * The server's 'clientError' listener (fastify's `clientErrorHandler`): writes the JSON answer on
 * the socket, unless a response of an earlier request on it is still being written, then closes it.
 */
export function answerClientError(error: Error, socket: Socket, requestTimeoutMs: number, log: FastifyBaseLogger): void {
  const answer = clientErrorAnswer(error, requestTimeoutMs);
  if (answer === undefined || socket.destroyed) return void socket.destroy();
  log.debug({ code: answer.code, parserCode: (error as NodeJS.ErrnoException).code }, `refused by the HTTP parser: ${answer.message}`);
  // Node's own test before it answers a client error (`_httpMessage` is the response assigned to the
  // socket): once a response has started, another one written now would interleave with it, so the
  // connection is only closed.
  const busy = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage?.headersSent === true;
  if (!socket.writable || busy) return void socket.destroy();
  const body = JSON.stringify(answer.toJSON());
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    ...SECURITY_HEADERS,
    connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`HTTP/1.1 ${answer.statusCode} ${STATUS_CODES[answer.statusCode] ?? ''}\r\n${head}\r\n${body}`, () => socket.destroy());
}
