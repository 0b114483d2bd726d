/*
 * Protobuf enums an Envoy bootstrap may give by name or by number (protobuf's JSON mapping takes
 * both, and so does Envoy): envoy.type.v3.StatusCode (http_status.proto) and
 * FractionalPercent.DenominatorType (percent.proto). A value not in the enum is said, with where.
 */

// envoy.type.v3.StatusCode: its names and the codes they stand for.
const STATUS_CODES = {
  Continue: 100,
  OK: 200,
  Created: 201,
  Accepted: 202,
  NonAuthoritativeInformation: 203,
  NoContent: 204,
  ResetContent: 205,
  PartialContent: 206,
  MultiStatus: 207,
  AlreadyReported: 208,
  IMUsed: 226,
  MultipleChoices: 300,
  MovedPermanently: 301,
  Found: 302,
  SeeOther: 303,
  NotModified: 304,
  UseProxy: 305,
  TemporaryRedirect: 307,
  PermanentRedirect: 308,
  BadRequest: 400,
  Unauthorized: 401,
  PaymentRequired: 402,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  ProxyAuthenticationRequired: 407,
  RequestTimeout: 408,
  Conflict: 409,
  Gone: 410,
  LengthRequired: 411,
  PreconditionFailed: 412,
  PayloadTooLarge: 413,
  URITooLong: 414,
  UnsupportedMediaType: 415,
  RangeNotSatisfiable: 416,
  ExpectationFailed: 417,
  MisdirectedRequest: 421,
  UnprocessableEntity: 422,
  Locked: 423,
  FailedDependency: 424,
  UpgradeRequired: 426,
  PreconditionRequired: 428,
  TooManyRequests: 429,
  RequestHeaderFieldsTooLarge: 431,
  InternalServerError: 500,
  NotImplemented: 501,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504,
  HTTPVersionNotSupported: 505,
  VariantAlsoNegotiates: 506,
  InsufficientStorage: 507,
  LoopDetected: 508,
  NotExtended: 510,
  NetworkAuthenticationRequired: 511,
};

// FractionalPercent.DenominatorType: its names in enum order (the number is the index).
const DENOMINATORS = [
  ['HUNDRED', 100],
  ['TEN_THOUSAND', 10000],
  ['MILLION', 1000000],
];

/** An HttpStatus code (a name of the enum, a number, or a number as a string) as a number; throws naming `at`. */
export function statusCode(value, at) {
  // Envoy takes a name in any case (serviceunavailable), as its JSON parser does.
  const named =
    typeof value === 'string' && Object.keys(STATUS_CODES).find((k) => k.toLowerCase() === value.toLowerCase());
  const code = named ? STATUS_CODES[named] : Number(value);
  if (!Object.values(STATUS_CODES).includes(code))
    throw new Error(
      `${at}: status code ${JSON.stringify(value)}: not an envoy.type.v3.StatusCode (a name like TooManyRequests, or its number)`,
    );
  return code;
}

/** A FractionalPercent's denominator (a name, or its number; HUNDRED when unset) as a number; throws naming `at`. */
export function denominator(value, at) {
  if (value === undefined || value === null) return 100;
  const found = DENOMINATORS.find(([name], i) => value === name || Number(value) === i);
  if (!found)
    throw new Error(`${at}: denominator ${JSON.stringify(value)}: HUNDRED, TEN_THOUSAND or MILLION (or 0, 1, 2)`);
  return found[1];
}
