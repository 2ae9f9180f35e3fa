#include "nft-table.h"

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <cerrno>
#include <vector>

#include "netlink-socket.h"

namespace knp {

void ReadTableInfo(const std::string& netnsPath, uint8_t family, const std::string& table, TableInfo* out) {
  NetlinkSocket sock;
  if (!sock.Open(netnsPath, &out->error)) {
    out->errnum = EIO;
    return;
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = sock.NextSeq();
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = family;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
  mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, table.c_str());
  bool interrupted = false;
  std::string error;
  int rc = sock.Request(
      nlh,
      [&](const nlmsghdr* m) {
        if ((m->nlmsg_type & 0xff) != NFT_MSG_NEWTABLE) return;
        out->found = true;
        mnl_attr_parse(
            m, sizeof(nfgenmsg),
            [](const nlattr* attr, void* data) {
              if (mnl_attr_get_type(attr) != NFTA_TABLE_USERDATA) return MNL_CB_OK;
              auto* info = static_cast<TableInfo*>(data);
              const auto* p = static_cast<const uint8_t*>(mnl_attr_get_payload(attr));
              info->hasUserdata = true;
              info->userdata.assign(p, p + mnl_attr_get_payload_len(attr));
              return MNL_CB_OK;
            },
            out);
      },
      &interrupted, &error);
  if (rc == ENOENT) {
    out->found = false;
  } else if (rc != 0) {
    out->error = "get table: " + error;
    out->errnum = rc;
  }
}

}  // namespace knp
