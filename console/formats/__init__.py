"""Date formats for the console's pages (FORMAT_MODULE_PATH): times to the second, with their zone."""
