# node-gyp build of the addon (what `npm install` runs when no prebuilt binary
# fits). The source list lives in native/sources.json, shared with CMakeLists.txt.
{
  "targets": [
    {
      "target_name": "kube_nft_proxy",
      "sources": [
        "<!@(node -p \"const s=require('./native/sources.json');[...s.addon,...s.netlink,...s.glue].join(' ')\")"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "native"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "NODE_ADDON_API_CPP_EXCEPTIONS"
      ],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "cflags_cc": ["-std=c++20", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter",
                    "<!@(pkg-config --cflags libnftnl libmnl)"],
      "cflags!": ["-fno-exceptions"],
      # Dynamic linking on purpose: Debian's libnftnl.a is not PIC, and the
      # shared libraries keep the GPL component replaceable.
      "libraries": ["<!@(pkg-config --libs libnftnl libmnl)"]
    }
  ]
}
