// A secret typed out in the server dialog's env or header values is saved in clear in the config
// file. This notices one and offers a ${NAME} reference instead, saying where the value then comes
// from: the environment of the `mcpdeck serve` process. The signs are mcpdeck._masking's
// (literal_secret, reference_for); tests/console/test_secret_hint.py holds both to one table.
import { add, button, clear, h } from './dom.js';

const SECRET_WORDS = /token|secret|key|password|passwd|pwd|auth|credential|bearer|cookie|session|private|signature|sig\b/i;
const TOKEN_PREFIX = /^(sk-|sk_|pk_|rk_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|ya29\.|eyJ)/;
const TOKEN_CHARS = /^[A-Za-z0-9_\-+=.~/]+$/;
const SCHEMES = ['bearer', 'basic', 'token'];

function looksLikeToken(value) {
  if (TOKEN_PREFIX.test(value) && value.length >= 12) return true;
  if (value.length < 20 || !TOKEN_CHARS.test(value) || value.includes('/')) return false;
  if (/^[0-9a-fA-F]{32,}$/.test(value)) return true;
  return /[a-z]/.test(value) && /[A-Z]/.test(value) && /[0-9]/.test(value);
}

/** The scheme of a `Bearer …` / `Basic …` / `Token …` credential, else null. */
function schemeOf(text) {
  const space = text.indexOf(' ');
  if (space < 0) return null;
  const scheme = text.slice(0, space);
  return SCHEMES.includes(scheme.toLowerCase()) && text.slice(space + 1).trim() ? scheme : null;
}

/** Whether `value`, typed for the env variable or header `name`, looks like a secret written out. */
export function literalSecret(name, value) {
  const text = value.trim();
  if (!text || text.includes('${')) return false;
  if (schemeOf(text)) return true;
  if (SECRET_WORDS.test(name) && text.length >= 8 && !text.includes(' ') && !text.includes('://') && !'/~.'.includes(text[0])) return true;
  return looksLikeToken(text);
}

/** [the variable to keep the secret in, what to save instead]: an env variable keeps its name, a header is named after the server. */
export function referenceFor(server, name, value, header) {
  let variable;
  if (!header && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    variable = name;
  } else {
    const own = header && name.toLowerCase() === 'authorization' ? 'TOKEN' : name;
    const parts = (header ? [server, own] : [own]).map((part) => part.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '').toUpperCase());
    variable = parts.filter(Boolean).join('_') || 'SECRET';
    if (/^[0-9]/.test(variable)) variable = `_${variable}`;
  }
  const scheme = schemeOf(value.trim());
  return [variable, scheme ? `${scheme} \${${variable}}` : `\${${variable}}`];
}

/**
 * The note under one env (or header) row: shown while its value looks like a secret typed out, with a
 * button that puts a ${NAME} reference in its place (and Undo). `server()` gives the server's name;
 * `kept(value)` is true for a stored secret shown masked, which is never offered.
 */
export function secretHint(keyInput, valueInput, { header = false, server = () => '', kept = () => false } = {}) {
  const note = h('small', { class: 'hint kv-note secret-hint', role: 'status' });
  note.hidden = true;
  function check() {
    const name = keyInput.value.trim();
    const value = valueInput.value;
    note.hidden = kept(value) || !literalSecret(name, value);
    if (note.hidden) return;
    const [variable, reference] = referenceFor(server(), name, value, header);
    add(clear(note), 'This looks like a secret: saved as typed, it sits in clear in the config file. ',
      button(`Use ${reference}`, () => {
        const typed = valueInput.value;
        valueInput.value = reference;
        add(clear(note), `Saved as ${reference}: mcpdeck reads ${variable} from the environment of the `,
          h('code', {}, 'mcpdeck serve'), ' process when it connects this server. Start serve with it set (',
          h('code', {}, `${variable}=… mcpdeck serve`), '). ',
          button('Undo', () => { valueInput.value = typed; check(); }, { class: 'small' }));
        note.hidden = false;
      }, { class: 'small', title: `Save a reference to the variable ${variable} instead of the value` }));
  }
  keyInput.addEventListener('input', check);
  valueInput.addEventListener('input', check);
  check();
  return note;
}
