/*
 * scrape internals shared by the files of src/scrape/ (not a public header).
 */
#ifndef HEARTH_SCRAPE_IMPL_H
#define HEARTH_SCRAPE_IMPL_H

#include "scrape.h"

/* Frees what a target config owns (not t itself). */
void scrape_target_cfg__fini(struct scrape_target_cfg *t);

#endif /* HEARTH_SCRAPE_IMPL_H */
