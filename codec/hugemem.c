/* SPDX-License-Identifier: MIT */
#include "hugemem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void *hugemem_alloc(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), lead;
	unsigned char *p;

	if (len == 0 || len > SIZE_MAX - 2 * HUGEMEM_PAGE)
		return NULL;
	len = (len + page - 1) / page * page;
	/* A huge page more than needed: keep a 2 MiB-aligned start, give back the rest. */
	p = mmap(NULL, len + HUGEMEM_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED)
		return NULL;
	lead = (size_t)(-(uintptr_t)p & (HUGEMEM_PAGE - 1));
	if (lead)
		munmap(p, lead);
	munmap(p + lead + len, HUGEMEM_PAGE - lead);
	madvise(p + lead, len, MADV_HUGEPAGE); /* a hint: failure is fine */
	return p + lead;
}

void hugemem_free(void *p, size_t len)
{
	/* munmap takes the length rounded up to a page, as hugemem_alloc mapped it. */
	if (p)
		munmap(p, len);
}
