// The login page (login.html): takes the server's bearer token once, checks it
// against the API, keeps it in sessionStorage (this tab, until it is closed) and
// goes back to the page that was refused. The API itself stays bearer-only:
// nothing here is a session on the server.

import { clearToken, getToken, loginTarget, probe, setToken } from './api.js';

const $ = (s) => document.querySelector(s);
const next = loginTarget(location.search);

function showError(msg) {
  const el = $('#login-error');
  el.textContent = msg || '';
  el.hidden = !msg;
  $('#token').setAttribute('aria-invalid', msg ? 'true' : 'false');
}

async function submit(e) {
  e.preventDefault();
  const token = $('#token').value.trim();
  if (!token) {
    showError('Type the token first.');
    return;
  }
  if (/\s/.test(token)) {
    showError('A token has no blanks: paste the one line of the --auth-token-file.');
    return;
  }
  $('#login').disabled = true;
  showError('');
  const st = await probe(token);
  $('#login').disabled = false;
  if (st === 200) {
    setToken(token);
    location.replace(next);
  } else if (st === 401) {
    showError('The server refused this token: check the file given to --auth-token-file.');
  } else if (st === 0) {
    showError('Server unreachable: hearth did not answer (is it still running?)');
  } else {
    showError(`The server answered ${st}; try again.`);
  }
  document.body.dataset.ready = '1';
}

async function init() {
  $('#login-form').addEventListener('submit', submit);
  // A page opened while no token is needed (or the kept one still works): go on.
  if ((await probe(getToken())) === 200) {
    location.replace(next);
    return;
  }
  clearToken();
  $('#token').focus();
  document.body.dataset.ready = '1';
}

init();
