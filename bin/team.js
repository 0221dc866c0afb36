#!/usr/bin/env node
// The `team` CLI of a clone (`node bin/team.js`, `npx team`): the CLI package's own bin.
import "../client/cli/bin.js";
