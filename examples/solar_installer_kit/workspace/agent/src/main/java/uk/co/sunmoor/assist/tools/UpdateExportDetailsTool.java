package uk.co.sunmoor.assist.tools;

import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.stereotype.Component;

import uk.co.sunmoor.assist.client.AccountsClient;
import uk.co.sunmoor.assist.client.dto.ExportDetailsUpdate;
import uk.co.sunmoor.assist.client.dto.AccountSummary;

/**
 * Stores the customer's export meter details on their Sunmoor account (PATCH /api/v1/accounts/{siteId}/export).
 */
@Component
public class UpdateExportDetailsTool {

    private final AccountsClient accounts;

    public UpdateExportDetailsTool(AccountsClient accounts) {
        this.accounts = accounts;
    }

    @Tool(name = "update_export_details",
          description = "Save the export MPAN and export tariff supplier on the customer's account, "
                  + "so the service team can chase missing or low export payments.")
    public AccountSummary updateExportDetails(
            @ToolParam(description = "Sunmoor site ID, format SM-######") String siteId,
            @ToolParam(description = "The 13-digit export MPAN from the export tariff welcome letter (not the import MPAN on the bill)") String exportMpan,
            @ToolParam(description = "Name of the export tariff supplier, e.g. Westcountry Energy") String exportSupplier) {
        return accounts.updateExport(siteId, new ExportDetailsUpdate(exportMpan, exportSupplier));
    }
}
