/** vop's version as npm started it (`npm start`, `npm run vop`); the package's when run another way. */
export const VOP_VERSION = process.env.npm_package_version ?? '0.1.0';
