import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console's build: served by the server at /console (server/routes/console.ts), so every
 * asset address starts with /console/. Built by `npm run build:console` (scripts/build-console.mjs).
 */
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The server's CSP allows no inline script or style: keep every asset a file.
    assetsInlineLimit: 0,
    target: 'es2022',
  },
});
