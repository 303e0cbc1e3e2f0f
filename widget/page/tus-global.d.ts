// The page loads tus-js-client's browser build (/widget/vendor/tus.min.js), which sets `window.tus`.
declare const tus: typeof import('tus-js-client');
