// Swagger UI for /docs.json, from BentoML's Swagger UI files: the base layout (BentoML hides the standalone
// layout's top bar anyway; its logo carries an inline <style> the Content-Security-Policy refuses) and no online
// spec validator, so nothing leaves this origin.
"use strict";
window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: "/docs.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
