// The page's DOM helpers: elements built from attributes and children, SVG elements,
// buttons, and the two lines the page speaks through (the action note and the status).

const SVG = "http://www.w3.org/2000/svg";

// el builds an element with attrs (class sets className) and children.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// svg builds an SVG element with attrs.
export function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// button is a button of class and data-action action; a render keeps its focus by them.
export function button(action, text, onClick, disabled) {
  const b = el("button", { type: "button", class: action, "data-action": action }, text);
  if (disabled) b.disabled = true;
  b.addEventListener("click", onClick);
  return b;
}

// note tells the outcome of an action above the list.
export function note(text, error) {
  const n = document.getElementById("action-note");
  n.textContent = text;
  n.classList.toggle("error", !!error);
}

// setStatus tells, in the header, when the page last read the sale, or why it cannot.
export function setStatus(text, down) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.classList.toggle("down", !!down);
}
