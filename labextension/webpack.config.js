/**
 * Merged by jupyter-builder into its own rspack configuration (package.json's
 * `jupyterlab.webpackConfig`).
 *
 * Module ids by order, not by a hash of each module's identifier: the module
 * federation entry's identifier holds the absolute paths of what it exposes,
 * so hashed ids made the bundle differ with the folder it was built in, and a
 * rebuild of unchanged sources (`pip install -e .` with Node.js on PATH) left
 * a checkout with a new `remoteEntry.*.js`. With these ids the same sources
 * give the same bytes wherever they are built.
 */
module.exports = {
  optimization: {
    moduleIds: 'natural'
  }
};
