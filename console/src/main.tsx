import { render } from "preact";
import { App } from "./components/app.js";
import { takeTokenFromLink } from "./session.js";

takeTokenFromLink();

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<App />, root);
}
