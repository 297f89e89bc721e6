/*
 * Additions to the model for modules that rebuild profiles from stored data
 * (src/store): a location interned by its full key, so that two locations at
 * one address with different lines (common in decoded pprof: address 0) stay
 * apart when a merged profile is rebuilt.
 */
#include "profile_impl.h"

uint64_t profile__location_lines(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t n_lines)
{
	return profile__location_exact(p, mapping_id, address, lines, n_lines);
}
