/* HTML and XML text escaping, k6-safe: the JUnit report, the results pages and the flame graphs share it. */
const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `s` (null and undefined as empty) with &, <, >, " and ' as entities. */
export const escapeHtml = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
