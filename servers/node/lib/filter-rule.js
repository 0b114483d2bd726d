/*
 * The JSON filter's decision: a pure function of the parsed document, true to relay it to the
 * backend, false to answer 204 at once. Swap this function to change the policy.
 */

/**
 * Default rule: relay a document whose top-level field "relay" is exactly true; everything else
 * (false, missing, another type, a JSON value that is not an object) is filtered out.
 */
export function shouldRelay(doc) {
  return doc !== null && typeof doc === 'object' && !Array.isArray(doc) && doc.relay === true;
}
