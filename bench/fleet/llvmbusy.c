/* bench/fleet: a program whose hot code runs inside libLLVM (a big library: its
 * unwind table alone is hundreds of thousands of rows). Creates and disposes
 * LLVM modules with a function in a loop through the C API, looked up with
 * dlsym so that no LLVM headers are needed. Usage: llvmbusy /path/libLLVM.so */
#include <dlfcn.h>
#include <stdio.h>

typedef void *(*ctx_create_fn)(void);
typedef void (*ctx_dispose_fn)(void *);
typedef void *(*mod_create_fn)(const char *, void *);
typedef void (*mod_dispose_fn)(void *);
typedef void *(*int_type_fn)(void *);
typedef void *(*fn_type_fn)(void *, void **, unsigned, int);
typedef void *(*add_fn_fn)(void *, const char *, void *);

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "libLLVM-14.so.1", RTLD_NOW);
	ctx_create_fn cc;
	ctx_dispose_fn cd;
	mod_create_fn mc;
	mod_dispose_fn md;
	int_type_fn it;
	fn_type_fn ft;
	add_fn_fn af;

	if (!h) {
		fprintf(stderr, "llvmbusy: %s\n", dlerror());
		return 2;
	}
	cc = (ctx_create_fn)dlsym(h, "LLVMContextCreate");
	cd = (ctx_dispose_fn)dlsym(h, "LLVMContextDispose");
	mc = (mod_create_fn)dlsym(h, "LLVMModuleCreateWithNameInContext");
	md = (mod_dispose_fn)dlsym(h, "LLVMDisposeModule");
	it = (int_type_fn)dlsym(h, "LLVMInt32TypeInContext");
	ft = (fn_type_fn)dlsym(h, "LLVMFunctionType");
	af = (add_fn_fn)dlsym(h, "LLVMAddFunction");
	if (!cc || !cd || !mc || !md || !it || !ft || !af) {
		fprintf(stderr, "llvmbusy: the LLVM C API is missing\n");
		return 2;
	}
	for (;;) {
		void *ctx = cc(), *m = mc("fleet", ctx), *i32 = it(ctx);
		void *params[2] = {i32, i32};
		char name[32];

		for (int k = 0; k < 200; k++) {
			snprintf(name, sizeof(name), "f%d", k);
			af(m, name, ft(i32, params, 2, 0));
		}
		md(m);
		cd(ctx);
	}
}
