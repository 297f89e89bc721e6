// The page's colours: the system's (prefers-color-scheme) unless the theme select
// picks light or dark, which this browser keeps (localStorage "hearth-theme"; a
// preference of the reader, not part of the view a link shares). style.css reads
// <html data-theme="light|dark">; no attribute follows the system.

const KEY = 'hearth-theme';
const dark = matchMedia('(prefers-color-scheme: dark)');

function stored() {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : '';
  } catch {
    return ''; // storage blocked: the system's theme
  }
}

function apply(choice) {
  if (choice) document.documentElement.dataset.theme = choice;
  else delete document.documentElement.dataset.theme;
}

/** The theme in effect: 'light' or 'dark'. */
export function theme() {
  return document.documentElement.dataset.theme || (dark.matches ? 'dark' : 'light');
}

/**
 * Wires the theme select (values '', 'light', 'dark'); onChange() runs when the
 * colours in effect change (the canvases read them when they draw).
 */
export function initTheme(select, onChange) {
  const choice = stored();
  apply(choice);
  select.value = choice;
  select.addEventListener('change', () => {
    apply(select.value);
    try {
      if (select.value) localStorage.setItem(KEY, select.value);
      else localStorage.removeItem(KEY);
    } catch {
      // not kept: the choice lasts for this page
    }
    onChange();
  });
  dark.addEventListener('change', () => {
    if (!document.documentElement.dataset.theme) onChange();
  });
}
