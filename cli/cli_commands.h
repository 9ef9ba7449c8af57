/* cli_commands.h — subcommands defined in their own files (cmd_<name>.c), listed here so
 * main.c's table stays one table. Each is present when its core module is built. */
#ifndef FATHOM_CLI_COMMANDS_H
#define FATHOM_CLI_COMMANDS_H

#include "cli.h"

#define CLI_EXTRA_COMMANDS

#endif
